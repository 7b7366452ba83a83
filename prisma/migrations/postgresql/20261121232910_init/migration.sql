-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateTable
CREATE TABLE "Organization" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Organization_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Project" (
    "id" TEXT NOT NULL,
    "organizationId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Project_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ApiKey" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "revokedAt" TIMESTAMP(3),

    CONSTRAINT "ApiKey_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Hardware" (
    "id" TEXT NOT NULL,
    "gpuType" TEXT NOT NULL,
    "gpuLink" TEXT NOT NULL,
    "gpuMemory" INTEGER NOT NULL,
    "gpuCount" INTEGER NOT NULL,
    "centsPerMinute" DOUBLE PRECISION NOT NULL,
    "capacityGpus" INTEGER NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Hardware_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Model" (
    "id" TEXT NOT NULL,
    "projectId" TEXT,
    "name" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "modelType" TEXT NOT NULL DEFAULT 'model',
    "architecture" TEXT,
    "baseModelId" TEXT,
    "loraModel" TEXT,
    "serverless" BOOLEAN NOT NULL DEFAULT false,
    "minGpuMemory" INTEGER,
    "contextLength" INTEGER,
    "organization" TEXT,
    "pricing" TEXT NOT NULL DEFAULT '{}',
    "description" TEXT,
    "source" TEXT,
    "status" TEXT NOT NULL DEFAULT 'ready',
    "created" BIGINT NOT NULL,

    CONSTRAINT "Model_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "HardwareReservation" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "hardwareId" TEXT NOT NULL,
    "gpus" INTEGER NOT NULL,
    "ownerKind" TEXT NOT NULL,
    "ownerId" TEXT NOT NULL,
    "startedAt" BIGINT NOT NULL,
    "endedAt" BIGINT,
    "centsPerMinute" DOUBLE PRECISION NOT NULL,

    CONSTRAINT "HardwareReservation_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "WorkItem" (
    "id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "subjectId" TEXT NOT NULL,
    "projectId" TEXT,
    "payload" TEXT NOT NULL DEFAULT '{}',
    "state" TEXT NOT NULL,
    "runAt" BIGINT NOT NULL,
    "attempt" INTEGER NOT NULL DEFAULT 0,
    "failures" INTEGER NOT NULL DEFAULT 0,
    "leaseOwner" TEXT,
    "leaseUntil" BIGINT,
    "heartbeatAt" BIGINT,
    "lastError" TEXT,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL,

    CONSTRAINT "WorkItem_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "Project_slug_key" ON "Project"("slug");

-- CreateIndex
CREATE INDEX "Project_organizationId_idx" ON "Project"("organizationId");

-- CreateIndex
CREATE UNIQUE INDEX "ApiKey_hash_key" ON "ApiKey"("hash");

-- CreateIndex
CREATE INDEX "ApiKey_projectId_idx" ON "ApiKey"("projectId");

-- CreateIndex
CREATE INDEX "Model_projectId_idx" ON "Model"("projectId");

-- CreateIndex
CREATE INDEX "Model_baseModelId_idx" ON "Model"("baseModelId");

-- CreateIndex
CREATE INDEX "HardwareReservation_hardwareId_endedAt_idx" ON "HardwareReservation"("hardwareId", "endedAt");

-- CreateIndex
CREATE INDEX "HardwareReservation_ownerKind_ownerId_idx" ON "HardwareReservation"("ownerKind", "ownerId");

-- CreateIndex
CREATE INDEX "WorkItem_state_runAt_idx" ON "WorkItem"("state", "runAt");

-- CreateIndex
CREATE INDEX "WorkItem_subjectId_idx" ON "WorkItem"("subjectId");

-- AddForeignKey
ALTER TABLE "Project" ADD CONSTRAINT "Project_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ApiKey" ADD CONSTRAINT "ApiKey_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
