#!/usr/bin/env node
import { Command } from 'commander';
import { registerAccountCommands } from './commands/account';
import { registerKeysCommands } from './commands/keys';
import { registerMigrateCommand } from './commands/migrate';
import { registerStartCommands } from './commands/start';
import { registerTaskCommands } from './commands/task';
import { tuneHeapGrowth } from '../runtime/heap';

tuneHeapGrowth();

/** The `gateway` command: `npm run gateway -- <command>`. Each command lives in ./commands. */
const program = new Command('gateway').description('AI model gateway').showHelpAfterError();
registerStartCommands(program);
registerMigrateCommand(program);
registerAccountCommands(program);
registerKeysCommands(program);
registerTaskCommands(program);

// Failures print their message only (a ConfigError lists every bad variable); LOG_LEVEL=debug adds the stack.
program.parseAsync(process.argv).catch((err: Error) => {
  const verbose = process.env.LOG_LEVEL === 'debug' || process.env.LOG_LEVEL === 'trace';
  process.stderr.write(`${verbose && err.stack ? err.stack : err.message}\n`);
  process.exit(1);
});
