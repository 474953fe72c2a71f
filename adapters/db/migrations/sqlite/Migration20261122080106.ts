import { Migration } from '@mikro-orm/migrations';

export class Migration20261122080106 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`environment_snapshots\` (\`operation_id\` text not null, \`project_id\` text not null, \`sealed\` text null, \`created_at\` datetime not null, primary key (\`operation_id\`));`);
    this.addSql(`create index \`environment_snapshots_project_id_index\` on \`environment_snapshots\` (\`project_id\`);`);

    this.addSql(`create table \`environment_variables\` (\`id\` text not null, \`project_id\` text not null, \`name\` text not null, \`scope\` text not null default 'both', \`ciphertext\` text not null, \`digest\` text not null, \`created_at\` datetime not null, \`updated_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create unique index \`environment_variables_project_id_name_unique\` on \`environment_variables\` (\`project_id\`, \`name\`);`);

    this.addSql(`create table \`project_keys\` (\`project_id\` text not null, \`key_id\` text not null, \`wrapped\` text not null, \`created_at\` datetime not null, \`updated_at\` datetime not null, primary key (\`project_id\`));`);
    this.addSql(`create index \`project_keys_key_id_index\` on \`project_keys\` (\`key_id\`);`);
  }

}
