-- AlterTable
ALTER TABLE "ComputeInstance" ADD COLUMN "removedAt" BIGINT;

-- CreateTable
CREATE TABLE "ClusterSharedVolume" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "projectId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "sizeTib" INTEGER NOT NULL,
    "region" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "lifecycleIndependent" BOOLEAN NOT NULL DEFAULT false,
    "clusterId" TEXT,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL
);

-- CreateTable
CREATE TABLE "ClusterAddOn" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "projectId" TEXT NOT NULL,
    "clusterId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "addOnType" TEXT NOT NULL,
    "config" TEXT NOT NULL DEFAULT '{}',
    "createdAt" BIGINT NOT NULL
);

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_Cluster" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "projectId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "region" TEXT NOT NULL,
    "clusterType" TEXT NOT NULL,
    "gpuType" TEXT NOT NULL,
    "cudaVersion" TEXT NOT NULL DEFAULT '',
    "nvidiaDriverVersion" TEXT NOT NULL DEFAULT '',
    "billingType" TEXT NOT NULL DEFAULT 'RESERVED',
    "numReservedGpus" INTEGER NOT NULL DEFAULT 0,
    "createdAt" BIGINT NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'Ready',
    "desiredGpus" INTEGER NOT NULL DEFAULT 0,
    "options" TEXT NOT NULL DEFAULT '{}',
    "phases" TEXT NOT NULL DEFAULT '',
    "reservations" TEXT NOT NULL DEFAULT '',
    "firstReadyAt" BIGINT,
    "deletedAt" BIGINT
);
INSERT INTO "new_Cluster" ("billingType", "clusterType", "createdAt", "cudaVersion", "gpuType", "id", "name", "numReservedGpus", "nvidiaDriverVersion", "projectId", "region") SELECT "billingType", "clusterType", "createdAt", "cudaVersion", "gpuType", "id", "name", "numReservedGpus", "nvidiaDriverVersion", "projectId", "region" FROM "Cluster";
DROP TABLE "Cluster";
ALTER TABLE "new_Cluster" RENAME TO "Cluster";
CREATE INDEX "Cluster_projectId_idx" ON "Cluster"("projectId");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- CreateIndex
CREATE INDEX "ClusterSharedVolume_projectId_idx" ON "ClusterSharedVolume"("projectId");

-- CreateIndex
CREATE INDEX "ClusterSharedVolume_clusterId_idx" ON "ClusterSharedVolume"("clusterId");

-- CreateIndex
CREATE INDEX "ClusterAddOn_clusterId_idx" ON "ClusterAddOn"("clusterId");
