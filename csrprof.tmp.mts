import { readFileSync } from 'node:fs';
import { CertificationRequest } from '@peculiar/asn1-csr';
import { AsnParser } from '@peculiar/asn1-schema';
const pem = readFileSync('/tmp/c.csr', 'utf8');
const der = Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
for (let i = 0; i < 60000; i++) AsnParser.parse(der, CertificationRequest);
