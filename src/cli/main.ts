#!/usr/bin/env node
import { Command } from 'commander';
import { registerAccountCommands } from './commands/account';
import { registerKeysCommands } from './commands/keys';
import { registerMigrateCommand } from './commands/migrate';
import { registerStartCommands } from './commands/start';

/** The `gateway` command: `npm run gateway -- <command>`. Each command lives in ./commands. */
const program = new Command('gateway').description('AI model gateway').showHelpAfterError();
registerStartCommands(program);
registerMigrateCommand(program);
registerAccountCommands(program);
registerKeysCommands(program);

program.parseAsync(process.argv).catch((err: Error) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
});
