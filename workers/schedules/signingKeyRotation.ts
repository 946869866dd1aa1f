import { requestRotation } from '../../shared/commands/signingKeys.js';
import { config } from '../../shared/config.js';
import { defineSchedule } from '../schedule.js';

/** Rotates the enrollment JWT signing key on HUB_KEY_ROTATION_CRON (default: monthly), through a pki job. */
export default defineSchedule({
  name: 'signing-key-rotation',
  cron: config().keyRotationCron,
  run: async () => {
    await requestRotation('clock');
  },
});
