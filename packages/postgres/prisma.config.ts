// Prisma 7 reads its schema location here; the tests connect through @prisma/adapter-pg at run time.
import { defineConfig } from 'prisma/config';

export default defineConfig({ schema: 'test/orm/prisma/schema.prisma' });
