import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

export const ENVIRONMENT_REACHES = ['agent', 'edge'] as const;
export type EnvironmentReach = (typeof ENVIRONMENT_REACHES)[number];

/** An agent environment (where shares are hosted), identified by a short `envZId`. */
export class Environment extends Model<InferAttributes<Environment>, InferCreationAttributes<Environment>> {
  declare envZId: string;
  declare hubId: string;
  declare description: string;
  /** The hub's default environment: shares created without an envZId belong to it (one per hub). */
  declare isDefault: CreationOptional<boolean>;
  /** 'agent': its targets are reached only through its connected agents (fail closed); 'edge': the edge connects itself. */
  declare reach: CreationOptional<EnvironmentReach>;
  declare createdBy: string;
  declare createdAt: CreationOptional<Date>;
}

export function initModel(sequelize: Sequelize): void {
  Environment.init(
    {
      envZId: { type: DataTypes.TEXT, primaryKey: true },
      hubId: { type: DataTypes.TEXT, allowNull: false },
      description: { type: DataTypes.TEXT, allowNull: false, defaultValue: '' },
      isDefault: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
      reach: { type: DataTypes.TEXT, allowNull: false, defaultValue: 'edge' },
      createdBy: { type: DataTypes.TEXT, allowNull: false },
      createdAt: DataTypes.DATE,
    },
    { sequelize, tableName: 'environments', updatedAt: false },
  );
}
