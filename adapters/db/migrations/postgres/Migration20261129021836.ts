import { Migration } from '@mikro-orm/migrations';

export class Migration20261129021836 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "users" add column "invited_at" timestamptz null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "users" drop column "invited_at";`);
  }

}
