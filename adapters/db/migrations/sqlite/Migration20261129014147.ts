import { Migration } from '@mikro-orm/migrations';

export class Migration20261129014147 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table \`environment_snapshots\` add column \`targeted\` integer not null default false;`);

    this.addSql(`drop index \`environment_variables_project_id_name_unique\`;`);

    this.addSql(`alter table \`environment_variables\` add column \`target\` text not null default 'all';`);
    this.addSql(`create unique index \`environment_variables_project_id_name_target_unique\` on \`environment_variables\` (\`project_id\`, \`name\`, \`target\`);`);
  }

}
