import { Migration } from '@mikro-orm/migrations';

export class Migration20261129015636 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "users" add column "role" varchar(16) not null default 'owner';`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "users" drop column "role";`);
  }

}
