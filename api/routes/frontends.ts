import type { Context } from 'koa';
import { Op } from 'sequelize';
import { Frontend } from '../../shared/models/Frontend.js';
import { presentFrontend } from '../presenters/platform.js';
import type { Routes } from '../router.js';
import { currentHub } from '../scope.js';

/** Standard frontends (no hub) plus the hub's own active custom frontends. */
async function listFrontends(ctx: Context) {
  const rows = await Frontend.findAll({
    where: { active: true, [Op.or]: [{ hubId: null }, { hubId: currentHub(ctx).id }] },
    order: [['createdAt', 'ASC'], ['id', 'ASC']],
  });
  ctx.body = rows.map(presentFrontend);
}

export default function routes({ hub, account }: Routes) {
  hub.get('/frontends', listFrontends);
  account.get('/account/frontends', listFrontends);
}
