import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

/** The ACME account of one directory: its key (sealed) and, once registered, its URL (the JWS `kid`). */
export class AcmeAccount extends Model<InferAttributes<AcmeAccount>, InferCreationAttributes<AcmeAccount>> {
  declare directoryUrl: string;
  declare accountUrl: string | null;
  declare privateKeySealed: string;
  declare createdAt: CreationOptional<Date>;
}

export function initModel(sequelize: Sequelize): void {
  AcmeAccount.init(
    {
      directoryUrl: { type: DataTypes.TEXT, primaryKey: true },
      accountUrl: { type: DataTypes.TEXT, allowNull: true },
      privateKeySealed: { type: DataTypes.TEXT, allowNull: false },
      createdAt: DataTypes.DATE,
    },
    { sequelize, tableName: 'acme_accounts', updatedAt: false },
  );
}
