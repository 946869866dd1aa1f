import { decryptSecret, encryptSecret, sha256 } from '../../shared/secrets.js';
import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

/** A one-time, time-limited authorisation to obtain a client certificate. */
export class CertificateRequestToken extends Model<InferAttributes<CertificateRequestToken>, InferCreationAttributes<CertificateRequestToken>> {
  declare id: string;
  declare hubId: string;
  declare name: string;
  /** The token string: kept only encrypted (`tokenSealed`); setting it sets the sealed copy and the digest. */
  declare token: string;
  declare tokenSealed: CreationOptional<string>;
  /** SHA-256 of `token`; look tokens up by this, never by the string. */
  declare tokenDigest: CreationOptional<Buffer>;
  declare commonName: string | null;
  declare organization: string | null;
  declare organizationalUnit: string | null;
  declare validYears: number;
  declare expiresAt: Date;
  declare spentAt: CreationOptional<Date | null>;
  declare createdBy: string;
  declare createdAt: CreationOptional<Date>;
  declare updatedAt: CreationOptional<Date>;
}

export function initModel(sequelize: Sequelize): void {
  CertificateRequestToken.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      hubId: { type: DataTypes.TEXT, allowNull: false },
      name: { type: DataTypes.TEXT, allowNull: false },
      token: {
        type: DataTypes.VIRTUAL,
        get(this: CertificateRequestToken) {
          const sealed = this.getDataValue('tokenSealed');
          return sealed ? decryptSecret(sealed) : undefined;
        },
        set(this: CertificateRequestToken, value: string) {
          this.setDataValue('tokenSealed', encryptSecret(value));
          this.setDataValue('tokenDigest', sha256(value));
        },
      },
      tokenSealed: { type: DataTypes.TEXT, allowNull: false },
      tokenDigest: { type: DataTypes.BLOB, allowNull: false },
      commonName: { type: DataTypes.TEXT, allowNull: true },
      organization: { type: DataTypes.TEXT, allowNull: true },
      organizationalUnit: { type: DataTypes.TEXT, allowNull: true },
      validYears: { type: DataTypes.INTEGER, allowNull: false },
      expiresAt: { type: DataTypes.DATE, allowNull: false },
      spentAt: { type: DataTypes.DATE, allowNull: true },
      createdBy: { type: DataTypes.TEXT, allowNull: false },
      createdAt: DataTypes.DATE,
      updatedAt: DataTypes.DATE,
    },
    { sequelize, tableName: 'certificate_request_tokens' },
  );
}
