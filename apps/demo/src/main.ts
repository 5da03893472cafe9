/**
 * `pnpm demo`: runs the demo and exits 0 only when every invariant holds (1 on FAIL or error,
 * 2 on a bad flag, 130 when interrupted).
 */
import { writeFileSync } from 'node:fs';
import { CommanderError } from 'commander';
import { parseDemoOptions } from './cli.js';
import type { DemoOptions } from './config.js';
import { formatReport } from './report.js';
import { DemoInterrupted, runDemo } from './run-demo.js';

async function main(): Promise<number> {
  let options: DemoOptions;
  try {
    options = parseDemoOptions(process.argv);
  } catch (error) {
    if (error instanceof CommanderError) return error.code === 'commander.helpDisplayed' || error.code === 'commander.version' ? 0 : 2;
    throw error;
  }
  const interrupt = new AbortController();
  const onSignal = () => interrupt.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const report = await runDemo(options, interrupt.signal, (line) => process.stderr.write(`${line}\n`));
    process.stdout.write(formatReport(report));
    if (options.reportJson) writeFileSync(options.reportJson, `${JSON.stringify(report, null, 2)}\n`);
    return report.pass ? 0 : 1;
  } catch (error) {
    if (error instanceof DemoInterrupted) {
      process.stderr.write('\ninterrupted: workers killed, database stopped\n');
      return 130;
    }
    process.stderr.write(`\ndemo failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

process.exit(await main());
