import type { Command } from 'commander';

// Placeholder: filled in by the keys work.
export function registerKeysCommands(_program: Command): void {}
