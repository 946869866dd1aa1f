import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

/** An ES256 key that signs enrollment JWTs. The private key is sealed with HUB_SECRET_KEY. */
export class SigningKey extends Model<InferAttributes<SigningKey>, InferCreationAttributes<SigningKey>> {
  declare kid: string;
  declare status: 'ACTIVE' | 'RETIRED' | 'REVOKED';
  declare publicJwk: Record<string, string>;
  declare privateKeySealed: string;
  /** The latest `exp` of any JWT this key signed: the key stays published until then. */
  declare latestJwtExpiry: CreationOptional<Date | null>;
  declare createdAt: CreationOptional<Date>;
  declare retiredAt: CreationOptional<Date | null>;
  /** Set when an operator revoked the key: it verifies nothing from then on. */
  declare revokedAt: CreationOptional<Date | null>;
}

export function initModel(sequelize: Sequelize): void {
  SigningKey.init(
    {
      kid: { type: DataTypes.TEXT, primaryKey: true },
      status: { type: DataTypes.TEXT, allowNull: false },
      publicJwk: { type: DataTypes.JSONB, allowNull: false },
      privateKeySealed: { type: DataTypes.TEXT, allowNull: false },
      latestJwtExpiry: { type: DataTypes.DATE, allowNull: true },
      createdAt: DataTypes.DATE,
      retiredAt: { type: DataTypes.DATE, allowNull: true },
      revokedAt: { type: DataTypes.DATE, allowNull: true },
    },
    { sequelize, tableName: 'signing_keys', updatedAt: false },
  );
}
