import type { Command } from 'commander';

// Placeholder: filled in by the account work.
export function registerAccountCommands(_program: Command): void {}
