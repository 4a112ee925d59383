import type { Command } from 'commander';

// Placeholder: filled in by the migrate work.
export function registerMigrateCommand(_program: Command): void {}
