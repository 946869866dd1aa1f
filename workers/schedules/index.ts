/** Every clock schedule, one import each (a module may export one schedule or several). */
import type { Schedule } from '../schedule.js';
import crlRefresh from './crlRefresh.js';
import customFrontendDnsWait from './customFrontendDnsWait.js';
import customFrontends from './customFrontends.js';
import executionRetention from './executionRetention.js';
import healthChecks from './healthChecks.js';
import metricsRollup from './metricsRollup.js';
import signingKeyRotation from './signingKeyRotation.js';
import sweep from './sweep.js';

export const schedules: Schedule[] = [
  crlRefresh,
  customFrontendDnsWait,
  customFrontends,
  executionRetention,
  healthChecks,
  metricsRollup,
  signingKeyRotation,
  sweep,
].flat();
