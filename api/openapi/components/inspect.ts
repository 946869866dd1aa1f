/** Request inspection: recorded exchanges. */
import { z } from 'zod';
import { id, timestamp, obj } from './base.js';

/** Request inspection: one recorded exchange as lists show it. */
export const InspectedExchange = obj({
  id: id.meta({ description: 'the exchange id (a Redis stream entry id)' }),
  at: timestamp.meta({ description: 'when the request reached the edge' }),
  method: z.string(),
  path: z.string().meta({ description: 'path and query as the client sent them' }),
  status: z.number().int().meta({ description: "the answer's status (499: the client left before an answer)" }),
  ms: z.number().meta({ description: 'from the request reaching the edge to the end of the answer' }),
  rxBytes: z.number().int(),
  txBytes: z.number().int(),
  clientAddress: z.string(),
  edge: z.string().meta({ description: 'the edge process that carried it' }),
  replayOf: id.optional().meta({ description: 'for a replay: the exchange it sent again' }),
}).meta({ id: 'InspectedExchange' });

const RecordedMessage = obj({
  headers: z.array(z.tuple([z.string(), z.string()])).meta({ description: "[name, value] pairs; credentials and the client certificate as '[redacted]'" }),
  body: z.string().meta({ description: 'base64 of the first HUB_INSPECT_BODY_BYTES bytes' }),
  bodyTruncated: z.boolean(),
});

export const InspectedExchangeDetail = obj({
  ...InspectedExchange.shape,
  request: RecordedMessage,
  response: RecordedMessage,
}).meta({ id: 'InspectedExchangeDetail' });
