/**
 * Every process checks its HUB_SECRET_KEY against the database at start: a known value sealed with the key of the
 * first process that ran (migration 1002). A process whose key cannot open it would fail every job that touches a
 * sealed secret (CA keys, client secrets, pre-shared keys); it refuses to run instead, saying why in one line.
 */
import { QueryTypes } from 'sequelize';
import { db } from './db.js';
import { decryptSecret, encryptSecret } from './secrets.js';

const PROBE = 'edgehub secret key probe';

class SecretKeyMismatch extends Error {}

export async function verifySecretKey(): Promise<void> {
  await db().query(`INSERT INTO secret_key_probe (id, sealed) VALUES (1, :sealed) ON CONFLICT (id) DO NOTHING`, {
    replacements: { sealed: encryptSecret(PROBE) },
  });
  const [row] = await db().query<{ sealed: string }>(`SELECT sealed FROM secret_key_probe WHERE id = 1`, { type: QueryTypes.SELECT });
  let opened: string | undefined;
  try {
    opened = decryptSecret(row.sealed);
  } catch {
    opened = undefined;
  }
  if (opened !== PROBE) {
    throw new SecretKeyMismatch(
      "HUB_SECRET_KEY is not the key this database's secrets are sealed with: every process of a deployment needs the same HUB_SECRET_KEY (npm start keeps it in HUB_DATA_DIR/secret-key)",
    );
  }
}

/** For a process's main: checks the key, or says why not in one line and exits with status 2. */
export async function refuseWrongSecretKey(): Promise<void> {
  try {
    await verifySecretKey();
  } catch (err) {
    if (!(err instanceof SecretKeyMismatch)) throw err;
    process.stderr.write(`edgehub: ${err.message}\n`);
    process.exit(2);
  }
}
