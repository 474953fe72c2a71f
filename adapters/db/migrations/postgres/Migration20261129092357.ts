import { Migration } from '@mikro-orm/migrations';

export class Migration20261129092357 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "agent_grants" ("id" uuid not null, "user_id" uuid not null, "name" varchar(100) not null, "source" varchar(16) not null, "client_id" text null, "created_at" timestamptz not null, "expires_at" timestamptz not null, "revoked_at" timestamptz null, "code_hash" varchar(64) null, "redirect_uri" text null, "code_challenge" varchar(43) null, "refresh_generation" int null, constraint "agent_grants_pkey" primary key ("id"));`);
    this.addSql(`create index "agent_grants_user_id_index" on "agent_grants" ("user_id");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "agent_grants" cascade;`);
  }

}
