import { InvalidArgumentError } from 'commander';

/** Option parsers shared by the commands. */

export function positiveInt(name: string, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    if (!/^[0-9]+$/.test(value) || Number(value) > max) throw new InvalidArgumentError(`${name} must be a whole number from 0 to ${max}`);
    return Number(value);
  };
}

export function integer(name: string) {
  return (value: string): number => {
    if (!/^-?[0-9]+$/.test(value)) throw new InvalidArgumentError(`${name} must be a whole number`);
    return Number(value);
  };
}

