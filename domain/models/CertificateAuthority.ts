import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

/** The service's root CA (hubId null) or a hub's issuing CA. The private key is sealed with HUB_SECRET_KEY. */
export class CertificateAuthority extends Model<InferAttributes<CertificateAuthority>, InferCreationAttributes<CertificateAuthority>> {
  declare id: string;
  declare kind: 'ROOT' | 'ISSUING';
  declare hubId: string | null;
  declare subject: string;
  declare certificatePem: string;
  declare privateKeySealed: string;
  declare notAfter: Date;
  declare createdAt: CreationOptional<Date>;
}

export function initModel(sequelize: Sequelize): void {
  CertificateAuthority.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      kind: { type: DataTypes.TEXT, allowNull: false },
      hubId: { type: DataTypes.TEXT, allowNull: true },
      subject: { type: DataTypes.TEXT, allowNull: false },
      certificatePem: { type: DataTypes.TEXT, allowNull: false },
      privateKeySealed: { type: DataTypes.TEXT, allowNull: false },
      notAfter: { type: DataTypes.DATE, allowNull: false },
      createdAt: DataTypes.DATE,
    },
    { sequelize, tableName: 'certificate_authorities', updatedAt: false },
  );
}
