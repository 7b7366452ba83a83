-- AlterTable
ALTER TABLE "Cluster" ADD COLUMN     "deletedAt" BIGINT,
ADD COLUMN     "desiredGpus" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "firstReadyAt" BIGINT,
ADD COLUMN     "options" TEXT NOT NULL DEFAULT '{}',
ADD COLUMN     "phases" TEXT NOT NULL DEFAULT '',
ADD COLUMN     "reservations" TEXT NOT NULL DEFAULT '',
ADD COLUMN     "state" TEXT NOT NULL DEFAULT 'Ready';

-- AlterTable
ALTER TABLE "ComputeInstance" ADD COLUMN     "removedAt" BIGINT;

-- CreateTable
CREATE TABLE "ClusterSharedVolume" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "sizeTib" INTEGER NOT NULL,
    "region" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "lifecycleIndependent" BOOLEAN NOT NULL DEFAULT false,
    "clusterId" TEXT,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL,

    CONSTRAINT "ClusterSharedVolume_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ClusterAddOn" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "clusterId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "addOnType" TEXT NOT NULL,
    "config" TEXT NOT NULL DEFAULT '{}',
    "createdAt" BIGINT NOT NULL,

    CONSTRAINT "ClusterAddOn_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "ClusterSharedVolume_projectId_idx" ON "ClusterSharedVolume"("projectId");

-- CreateIndex
CREATE INDEX "ClusterSharedVolume_clusterId_idx" ON "ClusterSharedVolume"("clusterId");

-- CreateIndex
CREATE INDEX "ClusterAddOn_clusterId_idx" ON "ClusterAddOn"("clusterId");
