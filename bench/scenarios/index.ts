import type { Scenario } from '../lib/types';
import { batchScenario } from './batch';
import { keyBatchScenario } from './key-batch';
import { keysScaleScenario } from './keys-scale';
import { modelsScenario } from './models';
import { processesScenario } from './processes';
import { relayScenario } from './relay';
import { videoScenario } from './video';

/** Every scenario `npm run bench` knows, in the order a full run executes them. Add new ones here. */
export const SCENARIOS: Scenario[] = [modelsScenario, keyBatchScenario, keysScaleScenario, relayScenario, processesScenario, videoScenario, batchScenario];
