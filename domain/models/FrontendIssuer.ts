import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

/** The local certificate authority that signs custom frontend certificates (private key sealed). */
export class FrontendIssuer extends Model<InferAttributes<FrontendIssuer>, InferCreationAttributes<FrontendIssuer>> {
  declare name: string;
  declare certificatePem: string;
  declare privateKeySealed: string;
  declare createdAt: CreationOptional<Date>;
}

export function initModel(sequelize: Sequelize): void {
  FrontendIssuer.init(
    {
      name: { type: DataTypes.TEXT, primaryKey: true },
      certificatePem: { type: DataTypes.TEXT, allowNull: false },
      privateKeySealed: { type: DataTypes.TEXT, allowNull: false },
      createdAt: DataTypes.DATE,
    },
    { sequelize, tableName: 'frontend_issuers', updatedAt: false },
  );
}
