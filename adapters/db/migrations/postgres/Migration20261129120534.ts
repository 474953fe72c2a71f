import { Migration } from '@mikro-orm/migrations';

export class Migration20261129120534 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "deploy_hooks" add column "created_by" jsonb null;`);

    this.addSql(`alter table "upload_sessions" add column "user_id" uuid null;`);

    this.addSql(`alter table "webhooks" add column "created_by" jsonb null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "deploy_hooks" drop column "created_by";`);

    this.addSql(`alter table "upload_sessions" drop column "user_id";`);

    this.addSql(`alter table "webhooks" drop column "created_by";`);
  }

}
