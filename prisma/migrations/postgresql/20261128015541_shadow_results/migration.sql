-- AlterTable
ALTER TABLE "ServedRequest" ADD COLUMN     "experimentId" TEXT,
ADD COLUMN     "matched" BOOLEAN;
