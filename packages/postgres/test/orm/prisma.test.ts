/**
 * `prismaTx`: Prisma 7 with the `@prisma/adapter-pg` driver adapter (no query engine binary) — see
 * ./support.ts for the cases. The client is generated from ./prisma/schema.prisma by `pnpm generate`
 * (run by this package's `test` and `typecheck` scripts).
 */
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './prisma/generated/client.js';
import { prismaTx } from '../../src/orm/prisma.js';
import { describeOrm, rollback, rollingBack, testSchema } from './support.js';

const db = testSchema('orm_prisma');

describeOrm('prisma', db, () => {
  const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: db.url, max: 2 }, { schema: db.schema }) });
  return {
    async transaction(fn, end) {
      const run = () =>
        prisma.$transaction(async (tx) => {
          const result = await fn(prismaTx(tx), async (id) => {
            await tx.reservation.create({ data: { id, status: 'pending' } });
          });
          if (end === 'rollback') rollback();
          return result;
        });
      return end === 'rollback' ? rollingBack(run) : run();
    },
    outsideTransaction: () => prismaTx(prisma),
    close: () => prisma.$disconnect(),
  };
});
