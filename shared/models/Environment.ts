import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

/** An agent environment (where shares are hosted), identified by a short `envZId`. */
export class Environment extends Model<InferAttributes<Environment>, InferCreationAttributes<Environment>> {
  declare envZId: string;
  declare hubId: string;
  declare description: string;
  /** The hub's default environment: shares created without an envZId belong to it (one per hub). */
  declare isDefault: CreationOptional<boolean>;
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
      createdBy: { type: DataTypes.TEXT, allowNull: false },
      createdAt: DataTypes.DATE,
    },
    { sequelize, tableName: 'environments', updatedAt: false },
  );
}
