import { Migration } from '@mikro-orm/migrations';

export class Migration20261124191800 extends Migration {

  override async up(): Promise<void> {
    // A static site with nothing to build ships its upload as the artifact: the folder to take as the root.
    this.addSql(`alter table \`builds\` add column \`artifact_root\` text null;`);
  }

}
