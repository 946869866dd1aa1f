import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

import { PROBE_RESULTS, type ProbeResult } from '../../shared/providers/httpProbe.js';

export { PROBE_RESULTS, type ProbeResult };

/** An HTTP probe of `target` + `path`; runs on demand, and every `intervalSeconds` when that is above 0. */
export class HealthCheck extends Model<InferAttributes<HealthCheck>, InferCreationAttributes<HealthCheck>> {
  declare id: string;
  declare hubId: string;
  declare name: string;
  declare method: string;
  declare path: string;
  declare expectedStatus: number;
  declare target: string | null;
  declare timeoutMs: number;
  declare intervalSeconds: number;
  declare enabled: boolean;
  declare lastResult: CreationOptional<ProbeResult | null>;
  declare lastStatus: CreationOptional<number | null>;
  declare lastLatencyMs: CreationOptional<number | null>;
  declare lastMessage: CreationOptional<string | null>;
  declare lastExecutedAt: CreationOptional<Date | null>;
  declare createdBy: string;
  declare createdAt: CreationOptional<Date>;
  declare updatedAt: CreationOptional<Date>;
}

export function initModel(sequelize: Sequelize): void {
  HealthCheck.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      hubId: { type: DataTypes.TEXT, allowNull: false },
      name: { type: DataTypes.TEXT, allowNull: false },
      method: { type: DataTypes.TEXT, allowNull: false },
      path: { type: DataTypes.TEXT, allowNull: false },
      expectedStatus: { type: DataTypes.INTEGER, allowNull: false },
      target: { type: DataTypes.TEXT, allowNull: true },
      timeoutMs: { type: DataTypes.INTEGER, allowNull: false },
      intervalSeconds: { type: DataTypes.INTEGER, allowNull: false },
      enabled: { type: DataTypes.BOOLEAN, allowNull: false },
      lastResult: { type: DataTypes.TEXT, allowNull: true },
      lastStatus: { type: DataTypes.INTEGER, allowNull: true },
      lastLatencyMs: { type: DataTypes.INTEGER, allowNull: true },
      lastMessage: { type: DataTypes.TEXT, allowNull: true },
      lastExecutedAt: { type: DataTypes.DATE, allowNull: true },
      createdBy: { type: DataTypes.TEXT, allowNull: false },
      createdAt: DataTypes.DATE,
      updatedAt: DataTypes.DATE,
    },
    { sequelize, tableName: 'health_checks' },
  );
}
