import { duePublications } from '../../domain/commands/crlPublication.js';
import { requestCrlsQuietly } from '../../domain/commands/revocations.js';
import { defineSchedule } from '../schedule.js';

/**
 * Every CA's CRL is signed anew at least every HUB_CRL_REFRESH, and a hub CA's OCSP responder is made or renewed in
 * time: each minute the clock asks for the CRLs that are due (none yet, or signed a refresh period ago), each one
 * pki job whose id folds it with any other request for the same CRL.
 */
export default defineSchedule({
  name: 'crl-refresh',
  cron: '20 * * * * *',
  run: async () => {
    await requestCrlsQuietly(await duePublications(), 'clock');
  },
});
