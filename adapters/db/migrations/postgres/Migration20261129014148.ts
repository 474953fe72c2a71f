import { Migration } from '@mikro-orm/migrations';

export class Migration20261129014148 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "environment_snapshots" add column "targeted" boolean not null default false;`);

    this.addSql(`alter table "environment_variables" drop constraint "environment_variables_project_id_name_unique";`);

    this.addSql(`alter table "environment_variables" add column "target" varchar(16) not null default 'all';`);
    this.addSql(`alter table "environment_variables" add constraint "environment_variables_project_id_name_target_unique" unique ("project_id", "name", "target");`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "environment_snapshots" drop column "targeted";`);

    this.addSql(`alter table "environment_variables" drop constraint "environment_variables_project_id_name_target_unique";`);
    this.addSql(`alter table "environment_variables" drop column "target";`);

    this.addSql(`alter table "environment_variables" add constraint "environment_variables_project_id_name_unique" unique ("project_id", "name");`);
  }

}
