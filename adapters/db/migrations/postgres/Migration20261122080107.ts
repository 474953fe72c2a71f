import { Migration } from '@mikro-orm/migrations';

export class Migration20261122080107 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "environment_snapshots" ("operation_id" uuid not null, "project_id" uuid not null, "sealed" text null, "created_at" timestamptz not null, constraint "environment_snapshots_pkey" primary key ("operation_id"));`);
    this.addSql(`create index "environment_snapshots_project_id_index" on "environment_snapshots" ("project_id");`);

    this.addSql(`create table "environment_variables" ("id" uuid not null, "project_id" uuid not null, "name" varchar(255) not null, "scope" varchar(16) not null default 'both', "ciphertext" text not null, "digest" varchar(100) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "environment_variables_pkey" primary key ("id"));`);
    this.addSql(`alter table "environment_variables" add constraint "environment_variables_project_id_name_unique" unique ("project_id", "name");`);

    this.addSql(`create table "project_keys" ("project_id" uuid not null, "key_id" varchar(64) not null, "wrapped" text not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "project_keys_pkey" primary key ("project_id"));`);
    this.addSql(`create index "project_keys_key_id_index" on "project_keys" ("key_id");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "environment_snapshots" cascade;`);

    this.addSql(`drop table if exists "environment_variables" cascade;`);

    this.addSql(`drop table if exists "project_keys" cascade;`);
  }

}
