import { Migration } from '@mikro-orm/migrations';

export class Migration20261125012547 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "kept_files" ("id" uuid not null, "account_id" uuid not null, "sha256" varchar(64) not null, "size" int not null, "last_used_at" timestamptz not null, "stored" boolean not null default false, "claim" uuid null, constraint "kept_files_pkey" primary key ("id"));`);
    this.addSql(`create index "kept_files_account_id_last_used_at_index" on "kept_files" ("account_id", "last_used_at");`);
    this.addSql(`create index "kept_files_last_used_at_index" on "kept_files" ("last_used_at");`);
    this.addSql(`alter table "kept_files" add constraint "kept_files_account_id_sha256_unique" unique ("account_id", "sha256");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "kept_files" cascade;`);
  }

}
