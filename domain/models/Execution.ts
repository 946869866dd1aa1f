import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

export const EXECUTION_STATUSES = ['QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED'] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];

/** One asynchronous (or audited immediate) operation. For a job, `processId` is the BullMQ job id (= `id`). */
export class Execution extends Model<InferAttributes<Execution>, InferCreationAttributes<Execution>> {
  declare id: string;
  declare hubId: string | null;
  declare processId: string;
  declare type: string;
  declare resourceType: string | null;
  declare resourceId: string | null;
  declare status: ExecutionStatus;
  declare payload: CreationOptional<Record<string, unknown>>;
  declare result: CreationOptional<Record<string, unknown> | null>;
  declare error: CreationOptional<string | null>;
  /** The BullMQ options (attempts, backoff, ...) the job was added with beyond the defaults; the sweeper re-adds it with them. */
  declare jobOptions: CreationOptional<Record<string, unknown> | null>;
  declare attempts: CreationOptional<number>;
  declare createdBy: string;
  declare createdAt: CreationOptional<Date>;
  declare startedAt: CreationOptional<Date | null>;
  declare finishedAt: CreationOptional<Date | null>;
}

export function initModel(sequelize: Sequelize): void {
  Execution.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      hubId: { type: DataTypes.TEXT, allowNull: true },
      processId: { type: DataTypes.TEXT, allowNull: false },
      type: { type: DataTypes.TEXT, allowNull: false },
      resourceType: { type: DataTypes.TEXT, allowNull: true },
      resourceId: { type: DataTypes.TEXT, allowNull: true },
      status: { type: DataTypes.TEXT, allowNull: false },
      payload: { type: DataTypes.JSONB, allowNull: false, defaultValue: {} },
      result: { type: DataTypes.JSONB, allowNull: true },
      error: { type: DataTypes.TEXT, allowNull: true },
      jobOptions: { type: DataTypes.JSONB, allowNull: true },
      attempts: { type: DataTypes.INTEGER, allowNull: false, defaultValue: 0 },
      createdBy: { type: DataTypes.TEXT, allowNull: false },
      createdAt: DataTypes.DATE,
      startedAt: { type: DataTypes.DATE, allowNull: true },
      finishedAt: { type: DataTypes.DATE, allowNull: true },
    },
    { sequelize, tableName: 'executions', updatedAt: false },
  );
}
