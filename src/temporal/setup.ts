/**
 * `npm run setup:temporal`: finds or builds the pinned Temporal CLI (see ./cli) and says where it is.
 * Also run by scripts/ensure-setup.sh before `npm start` and `npm test`; instant once cached.
 */
import { ensureTemporalCli, TEMPORAL_CLI_VERSION } from './cli';

const log = (line: string) => process.stdout.write(`[setup] ${line}\n`);

ensureTemporalCli(log).then(
  (cliPath) => {
    if (cliPath) {
      if (process.argv.includes('--verbose')) log(`Temporal CLI: ${cliPath}`);
    } else {
      log(
        `The Temporal CLI ${TEMPORAL_CLI_VERSION} could not be built here (no Go, or go install failed); the gateway will use the ` +
          'dev server that the Temporal SDK downloads on first use (needs internet once). ' +
          'Install Go or put `temporal` on PATH (or set TEMPORAL_CLI_PATH) to avoid the download.',
      );
    }
  },
  (err: Error) => {
    process.stderr.write(`[setup] Could not get the Temporal CLI: ${err.message}\n`);
    process.exit(1);
  },
);
