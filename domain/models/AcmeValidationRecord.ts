import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

/** A TXT record of the validation zone, published while an ACME DNS-01 challenge is being validated. */
export class AcmeValidationRecord extends Model<InferAttributes<AcmeValidationRecord>, InferCreationAttributes<AcmeValidationRecord>> {
  declare name: string;
  declare value: string;
  declare createdAt: CreationOptional<Date>;
}

export function initModel(sequelize: Sequelize): void {
  AcmeValidationRecord.init(
    {
      name: { type: DataTypes.TEXT, primaryKey: true },
      value: { type: DataTypes.TEXT, primaryKey: true },
      createdAt: DataTypes.DATE,
    },
    { sequelize, tableName: 'acme_validation_records', updatedAt: false },
  );
}
