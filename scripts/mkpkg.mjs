// One-off scaffolding helper: writes package.json/tsconfig for a workspace package.
import { mkdirSync, writeFileSync, existsSync } from 'node:fs';
const [dir, name, priv, depsJson, devJson, peerJson] = process.argv.slice(2);
mkdirSync(`${dir}/src`, { recursive: true });
mkdirSync(`${dir}/test`, { recursive: true });
const pkg = {
  name,
  version: '0.1.0',
  ...(priv === 'private' ? { private: true } : {}),
  type: 'module',
  license: 'MIT',
  engines: { node: '>=20' },
  exports: { '.': { types: './dist/index.d.ts', import: './dist/index.js' } },
  main: './dist/index.js',
  types: './dist/index.d.ts',
  files: ['dist'],
  scripts: {
    build: 'tsc -p tsconfig.build.json',
    typecheck: 'tsc -p tsconfig.json --noEmit',
    test: 'vitest run',
  },
  dependencies: JSON.parse(depsJson || '{}'),
  devDependencies: { '@types/node': '20.19.43', typescript: '5.9.3', vitest: '4.1.12', vite: '8.3.8', ...JSON.parse(devJson || '{}') },
  ...(peerJson ? JSON.parse(peerJson) : {}),
};
writeFileSync(`${dir}/package.json`, `${JSON.stringify(pkg, null, 2)}\n`);
writeFileSync(`${dir}/tsconfig.json`, `${JSON.stringify({ extends: '../../tsconfig.base.json', compilerOptions: { noEmit: true }, include: ['src', 'test', '*.ts'] }, null, 2)}\n`);
writeFileSync(`${dir}/tsconfig.build.json`, `${JSON.stringify({ extends: '../../tsconfig.base.json', compilerOptions: { outDir: 'dist', rootDir: 'src' }, include: ['src'] }, null, 2)}\n`);
if (!existsSync(`${dir}/vitest.config.ts`)) writeFileSync(`${dir}/vitest.config.ts`, `import { defineConfig } from 'vitest/config';\nimport { sharedTestConfig } from '../../vitest.shared.js';\n\nexport default defineConfig({ test: sharedTestConfig() });\n`);
