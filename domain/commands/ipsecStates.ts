import type { Model, ModelStatic, Transaction, WhereOptions } from 'sequelize';
import { Op, UniqueConstraintError } from 'sequelize';
import { invalidState } from '../../shared/errors.js';
import type { IpsecStatus } from '../models/IpsecTunnel.js';

interface Transition {
  from: readonly IpsecStatus[];
  to: IpsecStatus;
  /** For the refusal message: "cannot <action> from state X". */
  action: string;
}

type StatefulModel = Model & { id: string; status: IpsecStatus };

/**
 * A resource's state machine, the one place its status changes: `assert`
 * refuses an event from a state it does not leave (400 naming the state); `apply` moves the row with a conditional
 * UPDATE, so two racing writers cannot both make the same transition.
 */
export class StateMachine<E extends string, M extends StatefulModel> {
  constructor(
    private readonly what: string,
    private readonly model: ModelStatic<M>,
    readonly transitions: Record<E, Transition>,
  ) {}

  allows(status: IpsecStatus, event: E): boolean {
    return this.transitions[event].from.includes(status);
  }

  assert(row: M, event: E): void {
    if (!this.allows(row.status, event)) throw invalidState(`${this.what} ${row.id}`, row.status, this.transitions[event].action);
  }

  /** The row after the transition, or undefined when it was not in a state the event leaves. */
  async apply(id: string, event: E, changes: Partial<M['_creationAttributes']> = {}, transaction?: Transaction): Promise<M | undefined> {
    const { from, to } = this.transitions[event];
    const [, rows] = await this.model.update({ ...changes, status: to } as never, {
      where: { id, status: [...from] } as WhereOptions,
      returning: true,
      transaction,
    });
    return rows[0];
  }
}

/** The name of the unique index a UniqueConstraintError broke. */
export function brokenConstraint(err: unknown): string | undefined {
  if (!(err instanceof UniqueConstraintError)) return undefined;
  const parent = (err as { parent?: { constraint?: string } }).parent;
  return parent?.constraint;
}

export { IPSEC_STATUSES } from '../models/IpsecTunnel.js';

/**
 * A list's equality filters (attribute -> the values any of which matches) within one hub. DELETED rows are left out
 * unless a status filter asks for them; a `hubId` filter naming another hub matches nothing.
 */
export function listWhere(hubId: string, filters: Record<string, unknown[]>): WhereOptions {
  const conditions: Record<string, unknown> = Object.fromEntries(
    Object.entries(filters).map(([attribute, values]) => [attribute, values.length === 1 ? values[0] : { [Op.in]: values }]),
  );
  conditions.status ??= { [Op.ne]: 'DELETED' };
  return { [Op.and]: [conditions, { hubId }] };
}
