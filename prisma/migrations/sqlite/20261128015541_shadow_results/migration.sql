-- AlterTable
ALTER TABLE "ServedRequest" ADD COLUMN "experimentId" TEXT;
ALTER TABLE "ServedRequest" ADD COLUMN "matched" BOOLEAN;
