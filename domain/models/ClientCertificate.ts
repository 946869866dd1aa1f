import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

export type ClientCertificateSource = 'UPLOAD' | 'CSR' | 'ENROLLMENT';

/** A client certificate for mutual TLS: uploaded, issued from a CSR, or obtained by redeeming a token. */
export class ClientCertificate extends Model<InferAttributes<ClientCertificate>, InferCreationAttributes<ClientCertificate>> {
  declare id: string;
  declare hubId: string;
  declare name: string;
  declare source: ClientCertificateSource;
  declare certificatePem: string;
  /** The issuing CA, for certificates this service issued. */
  declare issuerId: string | null;
  declare fingerprintSha256: string;
  declare subject: string;
  declare serialNumber: string;
  declare notBefore: Date;
  declare notAfter: Date;
  declare certificateRequestTokenId: CreationOptional<string | null>;
  declare createdBy: string;
  declare createdAt: CreationOptional<Date>;
  declare updatedAt: CreationOptional<Date>;
}

export function initModel(sequelize: Sequelize): void {
  ClientCertificate.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      hubId: { type: DataTypes.TEXT, allowNull: false },
      name: { type: DataTypes.TEXT, allowNull: false },
      source: { type: DataTypes.TEXT, allowNull: false },
      certificatePem: { type: DataTypes.TEXT, allowNull: false },
      issuerId: { type: DataTypes.TEXT, allowNull: true },
      fingerprintSha256: { type: DataTypes.TEXT, allowNull: false },
      subject: { type: DataTypes.TEXT, allowNull: false },
      serialNumber: { type: DataTypes.TEXT, allowNull: false },
      notBefore: { type: DataTypes.DATE, allowNull: false },
      notAfter: { type: DataTypes.DATE, allowNull: false },
      certificateRequestTokenId: { type: DataTypes.TEXT, allowNull: true },
      createdBy: { type: DataTypes.TEXT, allowNull: false },
      createdAt: DataTypes.DATE,
      updatedAt: DataTypes.DATE,
    },
    { sequelize, tableName: 'client_certificates' },
  );
}
