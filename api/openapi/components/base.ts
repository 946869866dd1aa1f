/** What every response schema is built of: ids, timestamps, strict objects; the error answer and pages. */
import { z } from 'zod';
import 'zod-openapi';

export const id = z.string();
export const timestamp = z.iso.datetime({ offset: true });
export const nullableTimestamp = timestamp.nullable();
export const obj = <T extends z.ZodRawShape>(shape: T) => z.strictObject(shape);

export const ErrorBody = obj({
  error: z.string().meta({
    description:
      'the kind of error, shared by several refusals: invalid_request, unauthorized, forbidden, not_found, conflict, ... (the `Edgehub-Error-Code` header tells them apart)',
    example: 'not_found',
  }),
  message: z.string().meta({ description: 'what is wrong, for people', example: "no share 'abc' in this hub" }),
}).meta({ id: 'Error', description: 'Every error answer: `{error, message}`, never a stack trace; its code is in the `Edgehub-Error-Code` header.' });

/** A page of `item`s (paged lists: `page`, `size`, `sort` query parameters). */
export const page = <T extends z.ZodType>(item: T, name: string) =>
  obj({
    content: z.array(item),
    pageable: obj({ pageNumber: z.number().int(), pageSize: z.number().int() }),
    totalElements: z.number().int(),
    totalPages: z.number().int(),
  }).meta({ id: `${name}Page` });
