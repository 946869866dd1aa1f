import test from 'ava';
import { z } from 'zod';
import { ROTATE_JOB } from '../../domain/commands/pkiJobs.js';
import { defineProcessor, permanentFailure } from '../../workers/processor.js';
import { useStack } from '../helpers/stack.js';

/**
 * A failed signing-key rotation must not jam every later one. Its execution id names the key it
 * supersedes; once that execution was FAILED, every later request (clock or operator) found it and did nothing.
 */

const stack = useStack(test, { workers: false });

const rotate = () => stack.call('POST', '/admin/v1/signing-keys:rotate', { auth: stack.admin });
const jwksKids = async () => ((await stack.call('GET', '/hub/v2/public/.well-known/jwks.json')).json.keys as { kid: string }[]).map((k) => k.kid);

test.serial('a failed rotation leaves the next one free to run', async (t) => {
  // the rotation job fails for good (e.g. PostgreSQL refused the new key) ...
  const failing = defineProcessor({
    type: ROTATE_JOB,
    payload: z.object({ supersedes: z.string() }).strict(),
    handle: async () => {
      throw permanentFailure('key store unavailable');
    },
  });
  await stack.startWorkers([failing]);
  const [before] = await jwksKids();
  const failed = await rotate();
  t.is(failed.status, 503, failed.text);
  t.deepEqual(await jwksKids(), [before], 'nothing rotated');
  await stack.stopWorkers();

  // ... then the worker is healthy again: the next rotation runs and succeeds
  await stack.startWorkers();
  const r = await rotate();
  t.is(r.status, 200, r.text);
  t.not(r.json.kid, before);
  t.is(r.json.previousKid, before);
  t.true((await jwksKids()).includes(r.json.kid));

  // and rotations keep working over time, one at a time
  const again = await rotate();
  t.is(again.status, 200, again.text);
  t.is(again.json.previousKid, r.json.kid);
  await stack.stopWorkers();
});
