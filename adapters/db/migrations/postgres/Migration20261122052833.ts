import { Migration } from '@mikro-orm/migrations';

export class Migration20261122052833 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "upload_sessions" ("id" uuid not null, "account_id" uuid not null, "token_hash" varchar(64) not null, "project_id" uuid null, "name" varchar(100) null, "visibility" varchar(16) null, "options" jsonb not null, "filename" varchar(255) null, "transport" varchar(32) not null, "declared_size" int null, "received_bytes" int not null default 0, "parts" jsonb not null, "storage_key" varchar(300) not null, "multipart_upload_id" varchar(1024) null, "operation_id" uuid null, "expires_at" timestamptz not null, "used_at" timestamptz null, "created_at" timestamptz not null, constraint "upload_sessions_pkey" primary key ("id"));`);
    this.addSql(`alter table "upload_sessions" add constraint "upload_sessions_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "upload_sessions_account_id_expires_at_index" on "upload_sessions" ("account_id", "expires_at");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "upload_sessions" cascade;`);
  }

}
