import { Migration } from '@mikro-orm/migrations';

export class Migration20261122041038 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "access_requests" ("id" uuid not null, "email" varchar(320) not null, "name" varchar(200) null, "message" text null, "status" varchar(16) not null default 'pending', "created_at" timestamptz not null, "approved_at" timestamptz null, constraint "access_requests_pkey" primary key ("id"));`);
    this.addSql(`alter table "access_requests" add constraint "access_requests_email_unique" unique ("email");`);

    this.addSql(`create table "accounts" ("id" uuid not null, "name" varchar(200) not null, "plan" varchar(32) not null default 'free', "billing_category" varchar(32) not null default 'individual', "subscription_status" varchar(32) not null default 'active', "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "accounts_pkey" primary key ("id"));`);

    this.addSql(`create table "builds" ("id" uuid not null, "account_id" uuid not null, "project_id" uuid not null, "version_id" uuid not null, "operation_id" uuid not null, "status" varchar(16) not null default 'running', "artifact_key" varchar(300) null, "artifact_sha256" varchar(64) null, "artifact_size" int null, "log_key" varchar(300) null, "log" jsonb not null, "error" jsonb null, "created_at" timestamptz not null, "finished_at" timestamptz null, constraint "builds_pkey" primary key ("id"));`);
    this.addSql(`create index "builds_operation_id_index" on "builds" ("operation_id");`);
    this.addSql(`create index "builds_project_id_created_at_index" on "builds" ("project_id", "created_at");`);

    this.addSql(`create table "deployments" ("id" uuid not null, "account_id" uuid not null, "project_id" uuid not null, "version_id" uuid not null, "build_id" uuid not null, "operation_id" uuid not null, "status" varchar(16) not null default 'running', "target" jsonb null, "url" varchar(500) null, "error" jsonb null, "created_at" timestamptz not null, "live_at" timestamptz null, "ended_at" timestamptz null, constraint "deployments_pkey" primary key ("id"));`);
    this.addSql(`create index "deployments_operation_id_index" on "deployments" ("operation_id");`);
    this.addSql(`create index "deployments_project_id_created_at_index" on "deployments" ("project_id", "created_at");`);
    this.addSql(`create index "deployments_project_id_status_index" on "deployments" ("project_id", "status");`);

    this.addSql(`create table "idempotency_records" ("id" varchar(300) not null, "request_hash" varchar(64) not null, "status" int not null, "body" jsonb not null, "created_at" timestamptz not null, constraint "idempotency_records_pkey" primary key ("id"));`);
    this.addSql(`create index "idempotency_records_created_at_index" on "idempotency_records" ("created_at");`);

    this.addSql(`create table "jobs" ("id" uuid not null, "topic" varchar(64) not null, "key" varchar(200) null, "payload" jsonb not null, "state" varchar(16) not null default 'waiting', "available_at" timestamptz not null, "lease_until" timestamptz null, "lease_owner" varchar(64) null, "deliveries" int not null default 0, "created_at" timestamptz not null, constraint "jobs_pkey" primary key ("id"));`);
    this.addSql(`alter table "jobs" add constraint "jobs_key_unique" unique ("key");`);
    this.addSql(`create index "jobs_topic_state_available_at_index" on "jobs" ("topic", "state", "available_at");`);

    this.addSql(`create table "one_time_tokens" ("id" uuid not null, "user_id" uuid not null, "purpose" varchar(32) not null, "token_hash" varchar(64) not null, "expires_at" timestamptz not null, "used_at" timestamptz null, "created_at" timestamptz not null, constraint "one_time_tokens_pkey" primary key ("id"));`);
    this.addSql(`create index "one_time_tokens_user_id_index" on "one_time_tokens" ("user_id");`);
    this.addSql(`alter table "one_time_tokens" add constraint "one_time_tokens_token_hash_unique" unique ("token_hash");`);

    this.addSql(`create table "operations" ("id" uuid not null, "account_id" uuid not null, "project_id" uuid null, "kind" varchar(32) not null, "status" varchar(16) not null default 'queued', "progress" int not null default 0, "error" jsonb null, "state" jsonb null, "revision" int not null default 0, "version_id" uuid null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "finished_at" timestamptz null, constraint "operations_pkey" primary key ("id"));`);
    this.addSql(`create index "operations_project_id_status_index" on "operations" ("project_id", "status");`);
    this.addSql(`create index "operations_account_id_index" on "operations" ("account_id");`);

    this.addSql(`create table "outbox_mail" ("id" uuid not null, "to" varchar(320) not null, "subject" varchar(300) not null, "text" text not null, "created_at" timestamptz not null, constraint "outbox_mail_pkey" primary key ("id"));`);
    this.addSql(`create index "outbox_mail_to_index" on "outbox_mail" ("to");`);
    this.addSql(`create index "outbox_mail_created_at_index" on "outbox_mail" ("created_at");`);

    this.addSql(`create table "projects" ("id" uuid not null, "account_id" uuid not null, "name" varchar(100) not null, "slug" varchar(63) not null, "visibility" varchar(16) not null default 'draft', "settings" jsonb not null, "status" varchar(16) not null default 'active', "live_deployment_id" uuid null, "active_operation_id" uuid null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "projects_pkey" primary key ("id"));`);
    this.addSql(`alter table "projects" add constraint "projects_slug_unique" unique ("slug");`);
    this.addSql(`create index "projects_account_id_created_at_index" on "projects" ("account_id", "created_at");`);

    this.addSql(`create table "rate_buckets" ("key" varchar(400) not null, "window_start" timestamptz not null, "count" int not null default 0, constraint "rate_buckets_pkey" primary key ("key"));`);

    this.addSql(`create table "sessions" ("id" uuid not null, "user_id" uuid not null, "created_at" timestamptz not null, "expires_at" timestamptz not null, "revoked_at" timestamptz null, "user_agent" varchar(512) null, "address" varchar(64) null, constraint "sessions_pkey" primary key ("id"));`);
    this.addSql(`create index "sessions_user_id_index" on "sessions" ("user_id");`);

    this.addSql(`create table "users" ("id" uuid not null, "account_id" uuid not null, "email" varchar(320) not null, "password_hash" varchar(255) null, "email_verified_at" timestamptz null, "created_at" timestamptz not null, constraint "users_pkey" primary key ("id"));`);
    this.addSql(`create index "users_account_id_index" on "users" ("account_id");`);
    this.addSql(`alter table "users" add constraint "users_email_unique" unique ("email");`);

    this.addSql(`create table "versions" ("id" uuid not null, "account_id" uuid not null, "project_id" uuid not null, "operation_id" uuid not null, "filename" varchar(255) null, "archive_key" varchar(300) not null, "archive_size" int not null, "archive_sha256" varchar(64) not null, "options" jsonb not null, "analysis" jsonb null, "created_at" timestamptz not null, constraint "versions_pkey" primary key ("id"));`);
    this.addSql(`create index "versions_operation_id_index" on "versions" ("operation_id");`);
    this.addSql(`create index "versions_project_id_created_at_index" on "versions" ("project_id", "created_at");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "access_requests" cascade;`);

    this.addSql(`drop table if exists "accounts" cascade;`);

    this.addSql(`drop table if exists "builds" cascade;`);

    this.addSql(`drop table if exists "deployments" cascade;`);

    this.addSql(`drop table if exists "idempotency_records" cascade;`);

    this.addSql(`drop table if exists "jobs" cascade;`);

    this.addSql(`drop table if exists "one_time_tokens" cascade;`);

    this.addSql(`drop table if exists "operations" cascade;`);

    this.addSql(`drop table if exists "outbox_mail" cascade;`);

    this.addSql(`drop table if exists "projects" cascade;`);

    this.addSql(`drop table if exists "rate_buckets" cascade;`);

    this.addSql(`drop table if exists "sessions" cascade;`);

    this.addSql(`drop table if exists "users" cascade;`);

    this.addSql(`drop table if exists "versions" cascade;`);
  }

}
