-- CreateTable
CREATE TABLE "AbExperiment" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "projectId" TEXT NOT NULL,
    "endpointId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "members" TEXT NOT NULL,
    "previousSplit" TEXT NOT NULL,
    "createdBy" TEXT NOT NULL,
    "etag" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL
);

-- CreateTable
CREATE TABLE "ShadowExperiment" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "projectId" TEXT NOT NULL,
    "endpointId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "sampling" TEXT NOT NULL,
    "createdBy" TEXT NOT NULL,
    "etag" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL
);

-- CreateTable
CREATE TABLE "ShadowTarget" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "projectId" TEXT NOT NULL,
    "experimentId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "targetDeploymentId" TEXT NOT NULL,
    "etag" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL
);

-- CreateIndex
CREATE UNIQUE INDEX "AbExperiment_endpointId_key" ON "AbExperiment"("endpointId");

-- CreateIndex
CREATE UNIQUE INDEX "ShadowExperiment_endpointId_name_key" ON "ShadowExperiment"("endpointId", "name");

-- CreateIndex
CREATE UNIQUE INDEX "ShadowTarget_experimentId_targetDeploymentId_key" ON "ShadowTarget"("experimentId", "targetDeploymentId");

-- CreateIndex
CREATE UNIQUE INDEX "ShadowTarget_experimentId_name_key" ON "ShadowTarget"("experimentId", "name");
