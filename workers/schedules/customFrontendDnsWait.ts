import { expireDnsWaits } from '../../domain/commands/customFrontendLifecycle.js';
import { logger } from '../../shared/logger.js';
import { defineSchedule } from '../schedule.js';

/** Releases hostnames of NEW or PENDING custom frontends whose DNS wait ended with nothing left working on them. */
export default defineSchedule({
  name: 'custom-frontend-dns-wait',
  cron: '0 */5 * * * *',
  run: async () => {
    const expired = await expireDnsWaits();
    if (expired) logger.info({ expired }, 'custom frontends whose DNS wait ended are ERROR; their hostnames are released');
  },
});
