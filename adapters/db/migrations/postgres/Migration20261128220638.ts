import { Migration } from '@mikro-orm/migrations';

export class Migration20261128220638 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "deploy_hooks" ("id" uuid not null, "account_id" uuid not null, "project_id" uuid not null, "name" varchar(100) not null, "token_hash" varchar(64) not null, "created_at" timestamptz not null, "last_triggered_at" timestamptz null, constraint "deploy_hooks_pkey" primary key ("id"));`);
    this.addSql(`create index "deploy_hooks_project_id_index" on "deploy_hooks" ("project_id");`);
    this.addSql(`alter table "deploy_hooks" add constraint "deploy_hooks_token_hash_unique" unique ("token_hash");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "deploy_hooks" cascade;`);
  }

}
