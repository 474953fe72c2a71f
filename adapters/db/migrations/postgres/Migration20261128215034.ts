import { Migration } from '@mikro-orm/migrations';

export class Migration20261128215034 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "webhooks" ("id" uuid not null, "account_id" uuid not null, "project_id" uuid not null, "url" varchar(2048) not null, "events" varchar(255) not null, "secret_sealed" text not null, "created_at" timestamptz not null, constraint "webhooks_pkey" primary key ("id"));`);
    this.addSql(`create index "webhooks_project_id_index" on "webhooks" ("project_id");`);

    this.addSql(`create table "webhook_deliveries" ("id" uuid not null, "webhook_id" uuid not null, "project_id" uuid not null, "operation_id" uuid null, "event" varchar(64) not null, "payload" text null, "status" varchar(16) not null default 'pending', "attempts" int not null default 0, "next_attempt_at" timestamptz null, "response_status" int null, "last_error" varchar(500) null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "webhook_deliveries_pkey" primary key ("id"));`);
    this.addSql(`create index "webhook_deliveries_project_id_index" on "webhook_deliveries" ("project_id");`);
    this.addSql(`create index "webhook_deliveries_webhook_id_created_at_index" on "webhook_deliveries" ("webhook_id", "created_at");`);
    this.addSql(`create index "webhook_deliveries_status_next_attempt_at_index" on "webhook_deliveries" ("status", "next_attempt_at");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "webhooks" cascade;`);

    this.addSql(`drop table if exists "webhook_deliveries" cascade;`);
  }

}
