import type { Command } from 'commander';

// Placeholder: filled in by the runtime work (start, start:api, start:worker).
export function registerStartCommands(_program: Command): void {}
