-- AlterTable
ALTER TABLE "DedicatedEndpoint" ADD COLUMN "trafficOwner" TEXT;
