import { Migration } from '@mikro-orm/migrations';

export class Migration20261122041038 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`access_requests\` (\`id\` text not null, \`email\` text not null, \`name\` text null, \`message\` text null, \`status\` text not null default 'pending', \`created_at\` datetime not null, \`approved_at\` datetime null, primary key (\`id\`));`);
    this.addSql(`create unique index \`access_requests_email_unique\` on \`access_requests\` (\`email\`);`);

    this.addSql(`create table \`accounts\` (\`id\` text not null, \`name\` text not null, \`plan\` text not null default 'free', \`billing_category\` text not null default 'individual', \`subscription_status\` text not null default 'active', \`created_at\` datetime not null, \`updated_at\` datetime not null, primary key (\`id\`));`);

    this.addSql(`create table \`builds\` (\`id\` text not null, \`account_id\` text not null, \`project_id\` text not null, \`version_id\` text not null, \`operation_id\` text not null, \`status\` text not null default 'running', \`artifact_key\` text null, \`artifact_sha256\` text null, \`artifact_size\` integer null, \`log_key\` text null, \`log\` json not null, \`error\` json null, \`created_at\` datetime not null, \`finished_at\` datetime null, primary key (\`id\`));`);
    this.addSql(`create index \`builds_operation_id_index\` on \`builds\` (\`operation_id\`);`);
    this.addSql(`create index \`builds_project_id_created_at_index\` on \`builds\` (\`project_id\`, \`created_at\`);`);

    this.addSql(`create table \`deployments\` (\`id\` text not null, \`account_id\` text not null, \`project_id\` text not null, \`version_id\` text not null, \`build_id\` text not null, \`operation_id\` text not null, \`status\` text not null default 'running', \`target\` json null, \`url\` text null, \`error\` json null, \`created_at\` datetime not null, \`live_at\` datetime null, \`ended_at\` datetime null, primary key (\`id\`));`);
    this.addSql(`create index \`deployments_operation_id_index\` on \`deployments\` (\`operation_id\`);`);
    this.addSql(`create index \`deployments_project_id_created_at_index\` on \`deployments\` (\`project_id\`, \`created_at\`);`);
    this.addSql(`create index \`deployments_project_id_status_index\` on \`deployments\` (\`project_id\`, \`status\`);`);

    this.addSql(`create table \`idempotency_records\` (\`id\` text not null, \`request_hash\` text not null, \`status\` integer not null, \`body\` json not null, \`created_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create index \`idempotency_records_created_at_index\` on \`idempotency_records\` (\`created_at\`);`);

    this.addSql(`create table \`jobs\` (\`id\` text not null, \`topic\` text not null, \`key\` text null, \`payload\` json not null, \`state\` text not null default 'waiting', \`available_at\` datetime not null, \`lease_until\` datetime null, \`lease_owner\` text null, \`deliveries\` integer not null default 0, \`created_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create unique index \`jobs_key_unique\` on \`jobs\` (\`key\`);`);
    this.addSql(`create index \`jobs_topic_state_available_at_index\` on \`jobs\` (\`topic\`, \`state\`, \`available_at\`);`);

    this.addSql(`create table \`one_time_tokens\` (\`id\` text not null, \`user_id\` text not null, \`purpose\` text not null, \`token_hash\` text not null, \`expires_at\` datetime not null, \`used_at\` datetime null, \`created_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create index \`one_time_tokens_user_id_index\` on \`one_time_tokens\` (\`user_id\`);`);
    this.addSql(`create unique index \`one_time_tokens_token_hash_unique\` on \`one_time_tokens\` (\`token_hash\`);`);

    this.addSql(`create table \`operations\` (\`id\` text not null, \`account_id\` text not null, \`project_id\` text null, \`kind\` text not null, \`status\` text not null default 'queued', \`progress\` integer not null default 0, \`error\` json null, \`state\` json null, \`revision\` integer not null default 0, \`version_id\` text null, \`created_at\` datetime not null, \`updated_at\` datetime not null, \`finished_at\` datetime null, primary key (\`id\`));`);
    this.addSql(`create index \`operations_project_id_status_index\` on \`operations\` (\`project_id\`, \`status\`);`);
    this.addSql(`create index \`operations_account_id_index\` on \`operations\` (\`account_id\`);`);

    this.addSql(`create table \`outbox_mail\` (\`id\` text not null, \`to\` text not null, \`subject\` text not null, \`text\` text not null, \`created_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create index \`outbox_mail_to_index\` on \`outbox_mail\` (\`to\`);`);
    this.addSql(`create index \`outbox_mail_created_at_index\` on \`outbox_mail\` (\`created_at\`);`);

    this.addSql(`create table \`projects\` (\`id\` text not null, \`account_id\` text not null, \`name\` text not null, \`slug\` text not null, \`visibility\` text not null default 'draft', \`settings\` json not null, \`status\` text not null default 'active', \`live_deployment_id\` text null, \`active_operation_id\` text null, \`created_at\` datetime not null, \`updated_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create unique index \`projects_slug_unique\` on \`projects\` (\`slug\`);`);
    this.addSql(`create index \`projects_account_id_created_at_index\` on \`projects\` (\`account_id\`, \`created_at\`);`);

    this.addSql(`create table \`rate_buckets\` (\`key\` text not null, \`window_start\` datetime not null, \`count\` integer not null default 0, primary key (\`key\`));`);

    this.addSql(`create table \`sessions\` (\`id\` text not null, \`user_id\` text not null, \`created_at\` datetime not null, \`expires_at\` datetime not null, \`revoked_at\` datetime null, \`user_agent\` text null, \`address\` text null, primary key (\`id\`));`);
    this.addSql(`create index \`sessions_user_id_index\` on \`sessions\` (\`user_id\`);`);

    this.addSql(`create table \`users\` (\`id\` text not null, \`account_id\` text not null, \`email\` text not null, \`password_hash\` text null, \`email_verified_at\` datetime null, \`created_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create index \`users_account_id_index\` on \`users\` (\`account_id\`);`);
    this.addSql(`create unique index \`users_email_unique\` on \`users\` (\`email\`);`);

    this.addSql(`create table \`versions\` (\`id\` text not null, \`account_id\` text not null, \`project_id\` text not null, \`operation_id\` text not null, \`filename\` text null, \`archive_key\` text not null, \`archive_size\` integer not null, \`archive_sha256\` text not null, \`options\` json not null, \`analysis\` json null, \`created_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create index \`versions_operation_id_index\` on \`versions\` (\`operation_id\`);`);
    this.addSql(`create index \`versions_project_id_created_at_index\` on \`versions\` (\`project_id\`, \`created_at\`);`);
  }

}
