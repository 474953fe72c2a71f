import { Migration } from '@mikro-orm/migrations';

export class Migration20261124221620 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "deployments" add column "preview" boolean not null default false, add column "expires_at" timestamptz null;`);

    this.addSql(`alter table "projects" add column "preview_visibility" varchar(16) not null default 'private';`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "deployments" drop column "preview", drop column "expires_at";`);

    this.addSql(`alter table "projects" drop column "preview_visibility";`);
  }

}
