import type { MigrationContext } from '../migrate.js';

/**
 * Reliability review:
 * - executions keep the BullMQ options their job was added with, so the sweeper re-adds a lost job exactly as it was
 *   (a custom frontend's DNS wait has thousands of attempts 30 s apart, not the default five quick ones);
 * - a custom frontend can end in ERROR (provisioning spent its attempts, or its DNS wait ended), with the reason in
 *   `dns_message`; an ERROR frontend no longer holds its hostname, so the unique index covers the others only;
 * - `dns_wait_until`: when a NEW or PENDING frontend's claim on its hostname ends.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    ALTER TABLE executions ADD COLUMN job_options jsonb;

    ALTER TABLE custom_frontends DROP CONSTRAINT custom_frontends_status_check;
    ALTER TABLE custom_frontends ADD CONSTRAINT custom_frontends_status_check CHECK (status IN ('NEW', 'PENDING', 'ACTIVE', 'ERROR'));
    -- an ERROR frontend may have failed before its infrastructure existed
    DO $$
    DECLARE c text;
    BEGIN
      SELECT conname INTO c FROM pg_constraint
       WHERE conrelid = 'custom_frontends'::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%ingress_addresses IS NOT NULL%';
      EXECUTE format('ALTER TABLE custom_frontends DROP CONSTRAINT %I', c);
    END $$;
    ALTER TABLE custom_frontends ADD CONSTRAINT custom_frontends_infrastructure_check
      CHECK (status IN ('NEW', 'ERROR') OR (ingress_addresses IS NOT NULL AND validation_name IS NOT NULL AND validation_value IS NOT NULL));
    ALTER TABLE custom_frontends ADD COLUMN dns_wait_until timestamptz;
    DROP INDEX custom_frontends_hostname_key;
    CREATE UNIQUE INDEX custom_frontends_hostname_key ON custom_frontends (hostname) WHERE status <> 'ERROR';
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
