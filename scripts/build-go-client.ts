// Builds the openai-go client of the video tests (test/clients/openai-go) into its per-user cache, so that the test
// suite finds it in place instead of compiling it while it runs (a few minutes on a fresh machine). .ci/run calls
// this before `npm test`; the test builds it itself when it is missing.
import path from 'node:path';
import { buildGoClient } from '../test/helpers/go-client';

buildGoClient(path.resolve(__dirname, '../test/clients/openai-go')).then(
  (bin) => console.log(`[setup] openai-go test client at ${bin}`),
  (err: Error) => {
    console.error(err.message);
    process.exit(1);
  },
);
